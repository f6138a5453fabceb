"""``python -m cli`` runs the ``pod`` command (used to start background pods)."""

from cli.main import main

main()
