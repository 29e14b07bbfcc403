"""The commands' output, apart from what they compute: tables (render.py), write plans, migrate reports, messages."""
