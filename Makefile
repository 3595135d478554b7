# leanstore: PostgreSQL 15 table access method (PGXS build)
#
# Developer targets:
#   make / make install     build and install the extension (PGXS)
#   make unit               build and run the cmocka unit tests of the core
#   make asan               the same unit tests under AddressSanitizer + UBSan
#   make installcheck       pg_regress (run through test/run, which sets up the cluster)
#   make bench-core         the core benchmark (buffer-managed tree vs in-memory tree)
#   make check-layering     no core file includes postgres.h
#   make check-messages     src/pg's error reports follow the message style

EXTENSION = leanstore
MODULE_big = leanstore
DATA = sql/leanstore--0.1.sql
PGFILEDESC = "leanstore - LeanStore-style table access method"

CORE_DIRS = src/common src/buffer src/btree src/hot src/wal
CORE_SRCS = $(sort $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c)))
GLUE_SRCS = $(sort $(wildcard src/pg/*.c))
CORE_OBJS = $(CORE_SRCS:.c=.o)
GLUE_OBJS = $(GLUE_SRCS:.c=.o)
OBJS = $(CORE_OBJS) $(GLUE_OBJS)

REGRESS = $(sort $(basename $(notdir $(filter-out sql/leanstore--%,$(wildcard sql/*.sql)))))
# REGRESS_SKIP: tests left out of a run (test/run's regress-cold leaves out
# those that print counters which depend on when pack moves rows)
REGRESS := $(filter-out $(REGRESS_SKIP),$(REGRESS))

PG_CPPFLAGS = -I$(CURDIR)/include -D_GNU_SOURCE
SHLIB_LINK = -luring -lpthread

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The core is plain C11 with every warning an error. PostgreSQL's own flags
# (from pg_config) still apply; declarations after statements are fine here.
CORE_WARN = -std=c11 -Wall -Wextra -Werror -Wno-declaration-after-statement
$(CORE_OBJS): CFLAGS += $(CORE_WARN)
# The glue follows PostgreSQL style; PostgreSQL headers are not -Wextra clean.
$(GLUE_OBJS): CFLAGS += -std=gnu11 -Werror -Wno-declaration-after-statement

ALL_HEADERS = $(wildcard include/leanstore/*.h) $(wildcard src/*/*.h)
$(OBJS): $(ALL_HEADERS)

# `make LS_ASSERTS=1` builds the server library with LS_ASSERT checks on in
# the core and Assert on in the glue (test/run does; bench/run builds
# without).  The stamp makes a change of flavour rebuild every object (and
# the .bc files and the library), so the two flavours never mix: it is a
# prerequisite of each object, and a build in the other flavour removes it.
# It must not be an intermediate file (make skips a missing one): see
# .SECONDARY below, which names the unit objects only.
ifneq ($(LS_ASSERTS),)
override CPPFLAGS += -DLS_ASSERTS
LS_FLAVOUR = asserts
else
LS_FLAVOUR = release
endif
LS_FLAVOUR_STAMP = .flavour-$(LS_FLAVOUR)
$(LS_FLAVOUR_STAMP):
	rm -f .flavour-*
	touch $@
$(OBJS) $(OBJS:.o=.bc): $(LS_FLAVOUR_STAMP)
EXTRA_CLEAN = .flavour-*

# ---------------------------------------------------------------------------
# Core unit tests (cmocka), built outside PGXS into build/<variant>/
# ---------------------------------------------------------------------------
UNIT_CC ?= gcc
UNIT_BASE_CFLAGS = -std=c11 -D_GNU_SOURCE -DLS_ASSERTS -O2 -g -Wall -Wextra -Werror -Iinclude -pthread
UNIT_SRCS = $(sort $(wildcard test/unit/test_*.c))
UNIT_HELPERS = $(filter-out $(UNIT_SRCS),$(wildcard test/unit/*.c))
UNIT_LIBS = -lcmocka -luring -lpthread -lm

define unit_variant
build/$(1)/core/%.o: src/%.c $(ALL_HEADERS)
	@mkdir -p $$(dir $$@)
	$(UNIT_CC) $(UNIT_BASE_CFLAGS) $(2) -c $$< -o $$@
build/$(1)/unit/%.o: test/unit/%.c $(ALL_HEADERS) $(wildcard test/unit/*.h)
	@mkdir -p $$(dir $$@)
	$(UNIT_CC) $(UNIT_BASE_CFLAGS) -Itest/unit $(2) -c $$< -o $$@
build/$(1)/bin/%: build/$(1)/unit/%.o $(patsubst src/%.c,build/$(1)/core/%.o,$(CORE_SRCS)) $(patsubst test/unit/%.c,build/$(1)/unit/%.o,$(UNIT_HELPERS))
	@mkdir -p $$(dir $$@)
	$(UNIT_CC) $(UNIT_BASE_CFLAGS) $(2) -o $$@ $$^ $(UNIT_LIBS)
endef

ASAN_FLAGS = -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
$(eval $(call unit_variant,release,))
$(eval $(call unit_variant,asan,$(ASAN_FLAGS)))

UNIT_NAMES = $(basename $(notdir $(UNIT_SRCS)))
UNIT_RELEASE_BINS = $(addprefix build/release/bin/,$(UNIT_NAMES))
UNIT_ASAN_BINS = $(addprefix build/asan/bin/,$(UNIT_NAMES))
# objects of the unit and bench builds: made by pattern rules, kept (not
# deleted as intermediate files) so that a rebuild only recompiles changes
unit_objs = $(patsubst src/%.c,build/$(1)/core/%.o,$(CORE_SRCS)) \
	$(patsubst test/unit/%.c,build/$(1)/unit/%.o,$(UNIT_SRCS) $(UNIT_HELPERS))

.PHONY: unit asan unit-build asan-build check-layering check-messages bench-core
.SECONDARY: $(call unit_objs,release) $(call unit_objs,asan) \
	$(patsubst src/%.c,build/bench/core/%.o,$(CORE_SRCS))

unit-build: $(UNIT_RELEASE_BINS)
asan-build: $(UNIT_ASAN_BINS)

unit: unit-build check-layering check-messages
	@test/unit/run-all build/release/bin $(UNIT_NAMES)

asan: asan-build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		LEANSTORE_TEST_SCALE=$${LEANSTORE_TEST_SCALE:-asan} \
		test/unit/run-all build/asan/bin $(UNIT_NAMES)

check-layering:
	@test/unit/check-layering

check-messages:
	@test/unit/check-messages

# ---------------------------------------------------------------------------
# Core benchmark
# ---------------------------------------------------------------------------
BENCH_CFLAGS = -std=c11 -D_GNU_SOURCE -O3 -g -march=native -DNDEBUG -Wall -Wextra -Werror -Iinclude -pthread
build/bench/core/%.o: src/%.c $(ALL_HEADERS)
	@mkdir -p $(dir $@)
	$(UNIT_CC) $(BENCH_CFLAGS) -c $< -o $@
build/bench/bench_core: bench/bench_core.c $(patsubst src/%.c,build/bench/core/%.o,$(CORE_SRCS))
	@mkdir -p $(dir $@)
	$(UNIT_CC) $(BENCH_CFLAGS) -o $@ $^ -luring -lpthread -lm

bench-core: build/bench/bench_core
	build/bench/bench_core $(BENCH_ARGS)

clean: clean-build
clean-build:
	rm -rf build

# ---------------------------------------------------------------------------
# Isolation specs (test/isolation/schedule), run by test/run against a
# temporary instance: pass --temp-instance/--temp-config in EXTRA_REGRESS_OPTS.
# ---------------------------------------------------------------------------
.PHONY: installcheck-isolation
# A step that blocks where it should not is cancelled after
# PGISOLATIONTIMEOUT seconds (isolationtester's default is 300), so a
# failing spec shows up as a diff instead of stalling the whole run.
installcheck-isolation:
	PGISOLATIONTIMEOUT=$${PGISOLATIONTIMEOUT:-30} \
	$(top_builddir)/src/test/isolation/pg_isolation_regress \
		--inputdir=test/isolation --outputdir=output_iso --bindir='$(bindir)' \
		--dbname=isolation_regression --schedule=test/isolation/schedule \
		$(pg_regress_locale_flags) $(EXTRA_REGRESS_OPTS)
