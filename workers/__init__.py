"""What runs inside rank processes: the warm launcher, the tracer, the lessons and their checks.

Nothing here imports `app`; the server and the ranks meet only through the event protocol
(`workers.protocol`) and the launch request (`workers.launch_request`).
"""
