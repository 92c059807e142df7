# Test suite: the simulated driver, the check-based unit and rule tests, the GPU programs.
include $(srcdir)/tests/sim/local.mk
include $(srcdir)/tests/unit.mk
include $(srcdir)/tests/gpu/local.mk
