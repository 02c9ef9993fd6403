"""The VM backend: VMShapeLower, VMCodeGen (bytecode), the compiled mode and ``build``."""
