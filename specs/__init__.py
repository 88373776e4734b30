"""The bundled seed specs, shipped as package data so `haltproof check` finds them after install."""
