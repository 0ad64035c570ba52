"""Integrations of agent frameworks with Agora, one module each, built on
:class:`agora.Client` (a framework's own package is imported by its module
only, never by ``agora`` itself, so ``import agora`` needs none of them)."""
