"""Tests of orchestrator.config.model."""
