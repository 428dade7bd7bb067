"""A GPU-free PTX emulator."""
