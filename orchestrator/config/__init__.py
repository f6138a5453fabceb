"""The config model, where it is read from, and the key reference generated from it."""
