"""Tools shipped with YouYou: ``get_current_time`` and ``load_skill``."""
