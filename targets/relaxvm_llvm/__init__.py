"""relaxvm's LLVM CPU target: TIR to native code through llvmlite."""
