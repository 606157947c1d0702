"""The browser side: the chat page, the widget and the admin console (static/), and the console's
server-made SVG charts (``charts``).

Layer: shared, beside ``metrics`` and ``contract``; ``api`` serves it. May import only the standard
library.
"""
