"""What a pod can do, each in one folder that owns its glue: tools, permissions, hooks, checkpoints, jobs, sub-pods, knowledge."""
