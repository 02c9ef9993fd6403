"""relaxvm's op legalizations: each high-level Relax op lowered to a TE/TIR kernel."""
