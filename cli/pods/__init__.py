"""The CLI's view of this user's pods, one module a job: :mod:`.discovery` finds live pods,
:mod:`.start` starts a workspace's pod, :mod:`.launch` the pods of ``pod acp``, and
:mod:`.table` lists them as ``pod ls`` shows them.

Nothing is imported here: each command imports the module it needs, so a command that does
not look at pods pays nothing for them.
"""
