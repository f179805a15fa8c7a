"""The load stage: inventory files -> documents, and positions of values for problems."""
