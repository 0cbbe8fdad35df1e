# Test targets, included by the top-level Makefile. Each suite owns its own .mk.
-include tests/unit/unit.mk
-include tests/fuzz/fuzz.mk
-include tests/integration/integration.mk
