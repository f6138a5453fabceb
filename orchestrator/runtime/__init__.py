"""One pod's shell: the controller that drives the lifecycle machine, the turn loop, tool running, transcript."""
