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

/*
 * A tree under test, seen through its operations (ls_btree or ls_memtree
 * behind small wrappers); append may be the same as insert.
 */
typedef struct model_tree_ops
{
	ls_status	(*insert) (void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen);
	ls_status	(*append) (void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen);
	ls_status	(*update) (void *t, const uint8_t *key, uint32_t klen, const void *val, uint32_t vlen);
	ls_status	(*remove) (void *t, const uint8_t *key, uint32_t klen);
	ls_status	(*lookup) (void *t, const uint8_t *key, uint32_t klen, void *out, uint32_t cap,
						   uint32_t *vlen);
} model_tree_ops;

/*
 * One random operation on tree t and the model, its result checked against
 * the model (cmocka assertions: include cmocka.h first).  The mix depends on
 * phase: 0 grows (70% inserts), 1 churns (40%), 2 shrinks (10%); removes
 * mostly pick existing keys.  Keys up to maxkey bytes over keyspace, values
 * up to maxval bytes.
 */
static inline void
model_random_op(const model_tree_ops *ops, void *t, model *m, uint64_t *rng, int phase,
				uint32_t maxkey, uint64_t keyspace, uint32_t maxval)
{
	static uint8_t key[LS_BTREE_MAX_KEY],
				val[LS_BTREE_MAX_VALUE],
				out[LS_BTREE_MAX_VALUE];
	uint32_t	klen = random_key(rng, key, maxkey, keyspace);
	uint32_t	vlen = random_value(rng, val, maxval);
	uint64_t	r = ls_rand_next(rng) % 10;
	bool		found;

	model_find(m, key, klen, &found);
	if (r < (phase == 0 ? 7u : phase == 1 ? 4u : 1u))
	{
		ls_status	st = (r % 2) ? ops->insert(t, key, klen, val, vlen)
			: ops->append(t, key, klen, val, vlen);

		assert_int_equal(st, found ? LS_EXISTS : LS_OK);
		model_insert(m, key, klen, val, vlen);
	}
	else if (r < 7)
	{
		if (m->n && r % 2)
		{
			model_entry *e = &m->e[ls_rand_next(rng) % m->n];

			klen = e->klen;
			memcpy(key, e->key, klen);
			found = true;
		}
		assert_int_equal(ops->remove(t, key, klen), found ? LS_OK : LS_NOT_FOUND);
		model_remove(m, key, klen);
	}
	else if (r < 8)
	{
		assert_int_equal(ops->update(t, key, klen, val, vlen), found ? LS_OK : LS_NOT_FOUND);
		model_update(m, key, klen, val, vlen);
	}
	else
	{
		uint32_t	olen = 0;
		ls_status	st = ops->lookup(t, key, klen, out, sizeof(out), &olen);
		size_t		i = model_find(m, key, klen, &found);

		assert_int_equal(st, found ? LS_OK : LS_NOT_FOUND);
		if (found)
		{
			assert_int_equal(olen, m->e[i].vlen);
			if (olen)
				assert_memory_equal(out, m->e[i].val, olen);
		}
	}
}

#endif							/* TEST_BTREE_MODEL_H */
