"""``tasgen import-nodes``: kubectl's Node list -> a sorted NodeInventory (:mod:`.nodes`),
keeping only the labels tasgen does not write itself (:mod:`.label_filter`)."""
