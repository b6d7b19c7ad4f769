# ascent — one Makefile for the whole toolkit.
#
#   make            build bin/ascent and build/libascent.a
#   make deps       install the Debian packages that are missing (scripts/deps.sh)
#   make test       deps + build + every test (Criterion units, then integration scripts)
#   make check      the same tests, built with ASan + UBSan (into build/check)
#   make test-isa   the numerics tests once per ISA oneDNN/OpenBLAS may pick (tests/isa.sh)
#   make fuzz       every libFuzzer target under tests/fuzz for FUZZ_S seconds (default 60)
#   make bench      benchmarks; each prints JSON lines
#   make demo       the main job, from nothing
#   make install    PREFIX=/usr/local by default: bin/ascent, lib/libascent.{a,so}, lib/ascent/
#                   libascent-preload.so (`ascent profile`), include/ascent/*.h, lib/pkgconfig/ascent.pc
#
# Each module is a folder; its sources are every .c in it. A module may use only the modules to its
# left (docs/background.md):  common → db → import, profiler → comm → nn → trainer → diag, quant → viewer, cli.
# Each module becomes its own archive, so a unit test links only its module and those to its left.
#
# Several people (or helpers) can build the same tree at once with their own output folders:
#   make BUILD=/tmp/b1 BIN=/tmp/b1/bin test-unit

BUILD   ?= build
BIN     ?= bin
PREFIX  ?= /usr/local
CC      ?= cc
ARCH    ?= -march=native
OPT     ?= -O2
SAN     ?=

MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)

# -fPIC: the same objects go into build/libascent.a, build/libascent.so and the preload library of
# `ascent profile`; in bin/ascent (a PIE anyway) the linker relaxes the GOT accesses to direct ones.
# -Wformat-truncation is off: at -O1 (make check) it flags every bounded snprintf of a message into a
# fixed buffer, where cutting a long message is the intended behaviour.
WARN    := -Wall -Wextra -Wpedantic -Wstrict-prototypes -Wvla -Wwrite-strings -Werror -Wno-format-truncation
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = -std=c11 -D_GNU_SOURCE -I. $(ARCH) $(WARN) -fPIC -fopenmp -MMD -MP $(SAN) $(MPI_CFLAGS) $(CFLAGS)
LDLIBS  := -lsqlite3 -lcjson -lyajl -ldnnl -lopenblas -lncursesw -lunwind -lunwind-x86_64 $(MPI_LIBS) -lz -lm -lpthread -fopenmp
TEST_LDLIBS := -lcriterion

# Modules in dependency order (left may not use right).
MODULES := common db import profiler comm nn trainer diag quant viewer
# each module's public face, installed flat as include/ascent/<name>.h (`#include <ascent/prof.h>`;
# their includes of each other are rewritten to the flat names, see $(INC) below)
PUBLIC_HEADERS := common/common.h db/db.h import/import.h profiler/prof.h comm/comm.h nn/nn.h trainer/trainer.h \
                  diag/diag.h quant/quant.h viewer/viewer.h

# deps of each module, nearest first (link order)
DEPS_common   :=
DEPS_db       := common
DEPS_import   := db common
DEPS_profiler := db common
DEPS_comm     := profiler db common
DEPS_nn       := comm profiler db common
DEPS_trainer  := nn comm profiler db common
DEPS_diag     := trainer nn comm profiler db common
DEPS_quant    := trainer nn comm profiler db common
DEPS_viewer   := db common
DEPS_cli      := viewer quant diag trainer nn comm profiler import db common

define module_rules
$(1)_SRCS := $$(sort $$(wildcard $(1)/*.c))
$(1)_OBJS := $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS))
$(BUILD)/lib$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$$(if $$^,ar rcs $$@ $$^,ar rcs $$@)
endef
$(foreach m,$(MODULES),$(eval $(call module_rules,$(m))))
# db/schema.c embeds db/schema.sql with the assembler's .incbin
$(BUILD)/obj/db/schema.o: db/schema.sql

modlibs = $(foreach d,$(1),$(BUILD)/lib$(d).a)

CLI_SRCS := $(sort $(wildcard cli/*.c))
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
ALL_OBJS := $(foreach m,$(MODULES),$($(m)_OBJS))

# Unit tests: tests/unit/test_<module>[_what].c links <module> and everything to its left.
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
testmod = $(firstword $(subst _, ,$(patsubst test_%,%,$(notdir $(1)))))

define unit_rule
$(BUILD)/tests/$(1): $(BUILD)/obj/tests/unit/$(1).o $$(call modlibs,$(call testmod,$(1)) $$(DEPS_$(call testmod,$(1))))
	@mkdir -p $$(dir $$@)
	$$(CC) $(SAN) -o $$@ $$^ $$(TEST_LDLIBS) $$(LDLIBS)
endef
$(foreach t,$(patsubst tests/unit/%.c,%,$(UNIT_SRCS)),$(eval $(call unit_rule,$(t))))

# Fuzz/bench/sample programs: one .c each, linked with everything.
BENCH_SRCS  := $(sort $(wildcard bench/*.c))
BENCH_BINS  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
SAMPLE_SRCS := $(sort $(wildcard samples/*.c))
SAMPLE_BINS := $(patsubst samples/%.c,$(BUILD)/samples/%,$(SAMPLE_SRCS))
# Test programs the integration scripts run under mpirun (tests/mpi/NAME.c → $(BUILD)/tests/mpi/NAME).
MPITEST_SRCS := $(sort $(wildcard tests/mpi/*.c))
MPITEST_BINS := $(patsubst tests/mpi/%.c,$(BUILD)/tests/mpi/%,$(MPITEST_SRCS))

# Fuzzing: tests/fuzz/<target>.c defines LLVMFuzzerTestOneInput; its seeds are tests/fuzz/corpus/<target>/
# (a new .c and its folder are all a new target needs; docs/fuzzing.md). libFuzzer is clang's, so the
# code under test is compiled again with clang and coverage instrumentation (-fsanitize=fuzzer-no-link)
# plus ASan and UBSan into $(FUZZ_BUILD), never linked from the gcc archives. -Werror stays with the
# gcc build (the two compilers warn differently).
#   make fuzz           every target for FUZZ_S seconds (default 60), new inputs into build/fuzz/new/
#   make test           replays every corpus and runs every target 10 s (tests/run.sh)
FUZZ_CC     ?= clang
FUZZ_BUILD  ?= $(BUILD)/fuzz
FUZZ_S      ?= 60
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# -O0: clang with ASan, UBSan and coverage takes 5x longer to compile at -O1, and make test builds the
# targets on every CI run; the readers' time is mostly SQLite and cJSON (system libraries, optimized).
FUZZ_OPT    ?= -O0 -gline-tables-only
FUZZ_CFLAGS  = -std=c11 -D_GNU_SOURCE -I. $(ARCH) $(filter-out -Werror -Wno-format-truncation,$(WARN)) -fopenmp -MMD -MP \
               $(MPI_CFLAGS) $(FUZZ_OPT)
FUZZ_INSTR  := $(FUZZ_SAN) -fsanitize=fuzzer-no-link
# Compute kernels no reader reaches are compiled plain: instrumenting their AVX-512 intrinsics takes
# minutes of CPU, and no fuzz input can get there.
FUZZ_PLAIN  := quant/gemm_s8.c
$(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_PLAIN)): FUZZ_INSTR :=
FUZZ_SRCS   := $(sort $(wildcard tests/fuzz/*.c))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/bin/%,$(FUZZ_SRCS))
FUZZ_OBJS   := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(foreach m,$(MODULES),$($(m)_SRCS)))

.PHONY: all deps test test-unit test-integration test-isa check fuzz bench demo install clean
.DEFAULT_GOAL := all

all: $(BIN)/ascent $(BUILD)/libascent.a $(BUILD)/libascent.so $(BUILD)/libascent-preload.so $(SAMPLE_BINS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libascent.a: $(ALL_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

# The shared library: the same objects, for programs that link the hook API (pkg-config ascent).
SOVERSION := 0
$(BUILD)/libascent.so.$(SOVERSION): $(ALL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -shared -Wl,-soname,libascent.so.$(SOVERSION) -o $@ $^ $(LDLIBS)
$(BUILD)/libascent.so: $(BUILD)/libascent.so.$(SOVERSION)
	ln -sf libascent.so.$(SOVERSION) $@

# The library `ascent profile` preloads: PMPI wrappers (interpose/) over the profiler. Not part of
# libascent: its MPI_* definitions would interpose on every MPI call of whatever links it. It
# exports only the MPI entry points (interpose/exports.map); its own copy of profiler, db and
# common stays hidden, so it cannot clash with a program that links libascent itself.
INTERPOSE_SRCS := $(sort $(wildcard interpose/*.c))
INTERPOSE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(INTERPOSE_SRCS))
INTERPOSE_LIBS := -lsqlite3 -lcjson -lunwind -lunwind-x86_64 $(MPI_LIBS) -lz -lm -lpthread -ldl
$(BUILD)/libascent-preload.so: $(INTERPOSE_OBJS) $(call modlibs,profiler db common) interpose/exports.map
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -shared -Wl,--version-script=interpose/exports.map -Wl,-z,defs -o $@ \
	    $(INTERPOSE_OBJS) $(call modlibs,profiler db common) $(INTERPOSE_LIBS)

# Public headers as installed: include/ascent/<name>.h, their "module/x.h" includes made "x.h"
# (found beside the including header). The samples compile against this tree, as users do.
INC := $(BUILD)/include/ascent
STAGED_HEADERS := $(foreach h,$(PUBLIC_HEADERS),$(INC)/$(notdir $(h)))
define header_rule
$(INC)/$(notdir $(1)): $(1)
	@mkdir -p $$(dir $$@)
	sed -E 's@^#include "(common|db|import|profiler|comm|nn|trainer|diag|quant|viewer)/([a-z_]+\.h)"@#include "\2"@' $$< > $$@
endef
$(foreach h,$(PUBLIC_HEADERS),$(eval $(call header_rule,$(h))))
$(BUILD)/obj/samples/%.o: ALL_CFLAGS += -I$(BUILD)/include
$(patsubst %.c,$(BUILD)/obj/%.o,$(SAMPLE_SRCS)): | $(STAGED_HEADERS)

ASCENT_VERSION := $(shell sed -n 's/.*define ASCENT_VERSION "\(.*\)".*/\1/p' common/common.h)
# pkg-config file for PREFIX (written at install time, so PREFIX=... on `make install` counts)
define ascent_pc
prefix=$(PREFIX)
libdir=$${prefix}/lib
includedir=$${prefix}/include

Name: ascent
Description: ascent profiler hook API (profiler/prof.h) and the toolkit's modules
Version: $(ASCENT_VERSION)
Cflags: -I$${includedir}
Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lascent -lpthread -lm
Libs.private: $(LDLIBS)
endef
export ascent_pc

# `ascent profile` finds the preload library in the build folder when it is not installed
$(BUILD)/obj/cli/cmd_profile.o: ALL_CFLAGS += -DASCENT_BUILD_DIR='"$(abspath $(BUILD))"'

$(BIN)/ascent: $(CLI_OBJS) $(call modlibs,$(DEPS_cli))
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -rdynamic -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(call modlibs,$(DEPS_cli))
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/samples/%: $(BUILD)/obj/samples/%.o $(call modlibs,$(DEPS_cli))
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

$(FUZZ_BUILD)/obj/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -c $< -o $@

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_INSTR) -c $< -o $@
$(FUZZ_BUILD)/obj/db/schema.o: db/schema.sql

$(FUZZ_BUILD)/libascent.a: $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/bin/%: $(FUZZ_BUILD)/obj/tests/fuzz/%.o $(FUZZ_BUILD)/libascent.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(LDLIBS)

fuzz: deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_S) explore

$(BUILD)/tests/mpi/%: $(BUILD)/obj/tests/mpi/%.o $(call modlibs,$(DEPS_cli))
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

deps:
	@bash scripts/deps.sh

# `make test` installs what is missing, builds, then runs every test; the runner prints the
# closing line "N passed, N failed".
test: deps
	@$(MAKE) --no-print-directory all-tests
	@bash tests/run.sh $(BUILD) $(BIN)

# the fuzz targets are sanitized already: `make check` (SAN set) leaves them out
all-tests: all $(UNIT_BINS) $(if $(SAN),,$(FUZZ_BINS)) $(MPITEST_BINS)

test-unit: all-tests
	@bash tests/run.sh $(BUILD) $(BIN) unit

test-integration: all
	@bash tests/run.sh $(BUILD) $(BIN) integration

# the numerics tests under each instruction set oneDNN and OpenBLAS may pick (tests/isa.sh)
test-isa: deps
	@$(MAKE) --no-print-directory all-tests
	@bash tests/isa.sh $(BUILD) $(BIN)

check: deps
	@$(MAKE) --no-print-directory BUILD=build/check BIN=build/check/bin OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all-tests
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	    ASCENT_SANITIZED=1 bash tests/run.sh build/check build/check/bin

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@bash bench/run.sh $(BUILD) $(BIN)

demo: deps
	@$(MAKE) --no-print-directory all
	@bash scripts/demo.sh $(BIN)

install: all $(STAGED_HEADERS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/ascent
	install -m 755 $(BIN)/ascent $(DESTDIR)$(PREFIX)/bin/ascent
	install -d $(DESTDIR)$(PREFIX)/lib/ascent $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 $(BUILD)/libascent.a $(DESTDIR)$(PREFIX)/lib/libascent.a
	install -m 755 $(BUILD)/libascent.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libascent.so.$(SOVERSION)
	ln -sf libascent.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libascent.so
	install -m 755 $(BUILD)/libascent-preload.so $(DESTDIR)$(PREFIX)/lib/ascent/libascent-preload.so
	install -m 644 $(STAGED_HEADERS) $(DESTDIR)$(PREFIX)/include/ascent/
	printf '%s\n' "$$ascent_pc" > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ascent.pc

clean:
	rm -rf $(BUILD) $(BIN)

-include $(shell find $(BUILD)/obj $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
