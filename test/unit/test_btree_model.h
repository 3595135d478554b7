/*
 * test_btree_model.h - reference model for the B+-tree tests: a sorted array
 * of (key, value) byte strings with binary search.  Deliberately naive so it
 * is obviously right.  Plus random key/value generators shared by the tests.
 */
#ifndef TEST_BTREE_MODEL_H
#define TEST_BTREE_MODEL_H

#include <stdlib.h>
#include <string.h>

#include "leanstore/btree.h"

typedef struct model_entry
{
	uint8_t    *key;
	uint32_t	klen;
	uint8_t    *val;
	uint32_t	vlen;
} model_entry;

typedef struct model
{
	model_entry *e;
	size_t		n;
	size_t		cap;
} model;

/* Index of the first entry >= key; *found when equal. */
static inline size_t
model_find(const model *m, const uint8_t *key, uint32_t klen, bool *found)
{
	size_t		lo = 0,
				hi = m->n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;
		int			c = ls_key_cmp(m->e[mid].key, m->e[mid].klen, key, klen);

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < m->n && ls_key_cmp(m->e[lo].key, m->e[lo].klen, key, klen) == 0;
	return lo;
}

static inline uint8_t *
model_dup(const void *p, uint32_t len)
{
	uint8_t    *d = malloc(len ? len : 1);

	if (len)
		memcpy(d, p, len);
	return d;
}

/* Returns false when the key was already present. */
static inline bool
model_insert(model *m, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	bool		found;
	size_t		i = model_find(m, key, klen, &found);

	if (found)
		return false;
	if (m->n == m->cap)
	{
		m->cap = m->cap ? m->cap * 2 : 64;
		m->e = realloc(m->e, m->cap * sizeof(model_entry));
	}
	memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof(model_entry));
	m->e[i] = (model_entry) {model_dup(key, klen), klen, model_dup(val, vlen), vlen};
	m->n++;
	return true;
}

static inline bool
model_update(model *m, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen)
{
	bool		found;
	size_t		i = model_find(m, key, klen, &found);

	if (!found)
		return false;
	free(m->e[i].val);
	m->e[i].val = model_dup(val, vlen);
	m->e[i].vlen = vlen;
	return true;
}

static inline bool
model_remove(model *m, const uint8_t *key, uint32_t klen)
{
	bool		found;
	size_t		i = model_find(m, key, klen, &found);

	if (!found)
		return false;
	free(m->e[i].key);
	free(m->e[i].val);
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(model_entry));
	m->n--;
	return true;
}

static inline void
model_free(model *m)
{
	for (size_t i = 0; i < m->n; i++)
	{
		free(m->e[i].key);
		free(m->e[i].val);
	}
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/*
 * Random key: mostly short keys from a small alphabet with shared prefixes
 * (so prefixes, heads and hints all matter), some 8-byte big-endian ints,
 * some long keys.  Never empty.
 */
static inline uint32_t
random_key(uint64_t *rng, uint8_t *buf, uint32_t maxlen, uint64_t keyspace)
{
	uint64_t	r = ls_rand_next(rng);
	uint32_t	len;

	switch (r % 4)
	{
		case 0:
		case 1:
			ls_put_be64(buf, ls_rand_next(rng) % keyspace);
			return 8;
		case 2:
			len = 1 + (uint32_t) (ls_rand_next(rng) % 12);
			for (uint32_t i = 0; i < len; i++)
				buf[i] = (uint8_t) ('a' + ls_rand_next(rng) % 3);
			return len;
		default:
			len = 1 + (uint32_t) (ls_rand_next(rng) % maxlen);
			memset(buf, 'p', len);
			buf[len - 1] = (uint8_t) (ls_rand_next(rng) % 256);
			if (len > 2)
				buf[len / 2] = (uint8_t) (ls_rand_next(rng) % keyspace);
			return len;
	}
}

/* Random value of 0..maxlen bytes, content derived from a seed. */
static inline uint32_t
random_value(uint64_t *rng, uint8_t *buf, uint32_t maxlen)
{
	uint64_t	r = ls_rand_next(rng);
	uint32_t	len = (r % 8 == 0) ? (uint32_t) (ls_rand_next(rng) % (maxlen + 1))
		: (uint32_t) (ls_rand_next(rng) % 33);

	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t) (r >> (8 * (i % 8))) ^ (uint8_t) i;
	return len;
}

#endif							/* TEST_BTREE_MODEL_H */
