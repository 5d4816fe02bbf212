"""The paralab server: pages, REST, websocket streaming, the run manager, recording and trace export."""
