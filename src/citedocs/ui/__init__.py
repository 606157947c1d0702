"""The browser side: the chat page, the widget and the admin console (static/), and the console's charts."""
