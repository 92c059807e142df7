# Benchmarks: built and run on a GPU machine by bench/campaign.sh, never by make.
# (Needs "include $(srcdir)/bench/local.mk" in the top Makefile.am to ship in dist.)
EXTRA_DIST += \
	bench/README.md \
	bench/bench_copies.c \
	bench/bench_cu.h \
	bench/kv_swap.cu \
	bench/build-bench.sh \
	bench/run-bench.sh \
	bench/bench_report.py \
	bench/campaign.sh \
	bench/open-questions.sh \
	bench/torch_foreach.py \
	bench/inproc_ab.py \
	bench/test_report.py \
	bench/load_bench.cu \
	bench/run-load.sh \
	bench/load_report.py \
	bench/torch_load.py \
	bench/copy_path.c \
	bench/inproc_lone.c \
	bench/prio_probe.cu \
	bench/stage_probe.cu \
	bench/probe.h \
	bench/torch_batch_probe.py \
	bench/instructions.sh \
	bench/nvtx-cost.sh \
	bench/campaign-extras.sh \
	bench/bench_threads.c \
	bench/bench_tiles.c \
	bench/bench_launch.cu \
	bench/launch_hook.c \
	bench/tiles_path.c \
	bench/chunk_trace.c \
	bench/run-contig.sh \
	bench/look-ab.sh \
	bench/campaign-one-call.sh \
	bench/campaign-43.sh \
	bench/campaign-rows.sh \
	bench/hazard_rows.c \
	bench/report-43.py \
	bench/local.mk
EXTRA_DIST += bench/RESULTS.md bench/quick-extras.sh tools/mutants.py
# CPU only: dlopen/dlsym from threads, plain and preloaded (bench/dl_threads.c is
# also built by make check, tests/local.mk).
EXTRA_DIST += bench/dl-threads.sh bench/dl_plugin.c bench/load-campaign.sh bench/events-campaign.sh
