"""Tests of orchestrator.adapters."""
