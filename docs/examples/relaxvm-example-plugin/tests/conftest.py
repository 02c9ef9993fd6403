"""Run relaxvm's conformance suite (every op, every end-to-end model) on our target kind."""

pytest_plugins = ["relaxvm.testing.conformance"]

# Only the kind this package registers: relaxvm's own tests cover the others. Without this
# line the suite runs on every registered target kind; `--relaxvm-target NAME` overrides it.
relaxvm_conformance_targets = ["example_strict"]
