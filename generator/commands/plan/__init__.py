"""``tasgen plan``: what merging a change of the inventory does to the cluster.

Both revisions are compiled in memory (:func:`generator.pipeline.compile_inventory`), reduced to the facts
a reviewer needs (:mod:`.side`), compared (:mod:`.compare`, :mod:`.fit`, :mod:`.hierarchy`,
:mod:`.risks`) into one plain report whose shape is published as a JSON Schema
(``generator/schemas/plan-report.schema.json``), and printed as text, Markdown or JSON
(:mod:`.formats`).
"""
