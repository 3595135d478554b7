/*
 * crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78).
 *
 * ls_crc32c(crc, ...) continues a running CRC: the pre/post inversion is
 * done inside, so ls_crc32c(ls_crc32c(0, a), b) == ls_crc32c(0, a || b).
 * The SSE4.2 instruction is used when the CPU has it (checked once per
 * process at load time, so the choice never races); otherwise a table.
 */
#include "leanstore/common.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[256];
static bool crc_use_hw;

__attribute__((constructor))
static void
crc32c_setup(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[i] = c;
	}
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_use_hw = __builtin_cpu_supports("sse4.2");
#endif
}

uint32_t
ls_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t
crc32c_hw(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t	c = ~crc;

	while (len > 0 && ((uintptr_t) p & 7) != 0)
	{
		c = _mm_crc32_u8((uint32_t) c, *p++);
		len--;
	}
	while (len >= 8)
	{
		uint64_t	word;

		memcpy(&word, p, 8);
		c = _mm_crc32_u64(c, word);
		p += 8;
		len -= 8;
	}
	while (len > 0)
	{
		c = _mm_crc32_u8((uint32_t) c, *p++);
		len--;
	}
	return ~(uint32_t) c;
}
#endif

uint32_t
ls_crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
	if (LS_LIKELY(crc_use_hw))
		return crc32c_hw(crc, data, len);
#endif
	return ls_crc32c_sw(crc, data, len);
}

bool
ls_crc32c_hw(void)
{
	return crc_use_hw;
}
