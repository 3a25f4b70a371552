#!/usr/bin/python3
"""The Gateway API conformance suite's echo server on its h2c port, on
Debian's python3-h2.

    h2c-echo.py PORT=NAMESPACE/POD ...

Answers as echo-basic does on H2C_PORT (kubernetes-sigs/gateway-api
conformance/echo-basic): a JSON object with the request's path, host,
method, protocol and headers, and the namespace and pod that answered;
over HTTP/2 by prior knowledge only. A client speaking HTTP/1.1 gets its
connection closed with no answer (echo-basic would answer it; here a
gateway that does not speak h2c to such a backend fails). Prints "ready",
runs until killed; a thread per connection.
"""

import json
import socket
import sys
import threading

import h2.config
import h2.connection
import h2.events
import h2.exceptions


def canonical(name):
    """Go's canonical header key: "x-foo-bar" -> "X-Foo-Bar"."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def answer(conn, stream_id, headers, namespace, pod):
    fields = {}
    pseudo = {}
    for name, value in headers:
        name, value = name.decode(), value.decode()
        if name.startswith(":") or name == "host":
            pseudo[name] = value
        else:
            fields.setdefault(canonical(name), []).append(value)
    body = json.dumps({
        "path": pseudo.get(":path", ""),
        # Go's server takes Host where :authority is missing, and keeps
        # neither among the headers
        "host": pseudo.get(":authority", pseudo.get("host", "")),
        "method": pseudo.get(":method", ""),
        "proto": "HTTP/2.0",
        "headers": fields,
        "namespace": namespace,
        "ingress": "",
        "service": "",
        "pod": pod,
    }).encode()
    conn.send_headers(stream_id, [(":status", "200"), ("content-type", "application/json"),
                                  ("content-length", str(len(body)))])
    conn.send_data(stream_id, body, end_stream=True)


def serve(sock, namespace, pod):
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    requests = {}
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                return  # not HTTP/2 (an HTTP/1.1 request line): no answer
            for event in events:
                if isinstance(event, h2.events.RequestReceived):
                    requests[event.stream_id] = event.headers
                    if event.stream_ended:
                        answer(conn, event.stream_id, requests.pop(event.stream_id), namespace, pod)
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id in requests:
                    answer(conn, event.stream_id, requests.pop(event.stream_id), namespace, pod)
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
    except OSError:
        return
    finally:
        sock.close()


def listen(listener, namespace, pod):
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock, namespace, pod), daemon=True).start()


def main():
    threads = []
    for arg in sys.argv[1:]:
        port, _, identity = arg.partition("=")
        namespace, _, pod = identity.partition("/")
        if not port.isdigit() or not namespace or not pod:
            sys.exit("bad argument " + arg)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(128)
        threads.append(threading.Thread(target=listen, args=(listener, namespace, pod), daemon=True))
    for thread in threads:
        thread.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
