"""What a pod is told: the config model and its tables, where it is read from (and the grants a
workspace's file may not give), the paths of a pod's state on this machine, opening a given
path as a regular file, and the key reference generated from the models. Imports only
``config``, ``core``, ``errors`` and ``states`` (docs/design.md, "The house: layers")."""
