"""``python -m tasgen.gate``: the gate image's entry point, without the compiler's CLI (and
so without its dependencies)."""

from .command import gate

if __name__ == "__main__":
    gate(prog_name="tasgen gate")
