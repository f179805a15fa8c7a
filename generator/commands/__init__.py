"""What only one command needs, a package per command (``tasgen plan``, ``init``, ``fetch``,
``import-nodes``). The pipeline's stages are shared; nothing here is imported by a stage or by
another command (import-linter checks both)."""
