#!/usr/bin/python3
"""The Gateway API conformance suite's gRPC echo server and client, on
Debian's python3-grpcio and python3-protobuf.

    grpc-echo.py serve PORT=NAMESPACE/POD[,CERT,KEY] ...
        Answers as echo-basic does with GRPC_ECHO_SERVER=1 (plaintext
        HTTP/2, or TLS with CERT and KEY as with TLS_SERVER_CERT,
        kubernetes-sigs/gateway-api-conformance-images): service
        gateway_api_conformance.echo_basic.grpcecho.GrpcEcho, methods Echo,
        EchoTwo and EchoThree, each answering an EchoResponse whose
        assertions carry the method, the request's metadata and the
        namespace and pod that answered. Prints "ready", runs until killed.

    grpc-echo.py hold ADDRESS AUTHORITY
        One channel (one HTTP/2 connection, kept open), a call of Echo on it
        for each line read on stdin, its code printed ("OK" or the status
        code's name), a line each, until stdin ends.

    grpc-echo.py call
        Reads a JSON list of calls from stdin, each {"address": "IP:PORT",
        "method": "Echo", "authority": ..., "metadata": {...}}, makes them
        as the suite's grpc.DefaultClient does (insecure channel, the
        authority set on the channel, metadata as outgoing context) and
        prints a JSON list of results: {"code": "OK" or the status code's
        name, "method", "namespace", "pod", "headers": [[key, value], ...]}.
"""

import json
import sys
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "gateway_api_conformance.echo_basic.grpcecho"
SERVICE = PACKAGE + ".GrpcEcho"
METHODS = ("Echo", "EchoTwo", "EchoThree")


def _messages():
    """The messages of echo-basic's grpcecho.proto, built from their
    descriptor (field numbers and types as there)."""
    f = descriptor_pb2.FileDescriptorProto(name="grpcecho.proto", package=PACKAGE, syntax="proto3")
    string, message = descriptor_pb2.FieldDescriptorProto.TYPE_STRING, descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
    optional, repeated = (descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                          descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)

    def add(name, fields):
        m = f.message_type.add(name=name)
        for number, (field, kind, label, type_name) in enumerate(fields, 1):
            fd = m.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                fd.type_name = "." + PACKAGE + "." + type_name

    add("Header", [("key", string, optional, None), ("value", string, optional, None)])
    add("Context", [("namespace", string, optional, None), ("ingress", string, optional, None),
                    ("service_name", string, optional, None), ("pod", string, optional, None)])
    add("TLSAssertions", [("version", string, optional, None), ("negotiated_protocol", string, optional, None),
                          ("server_name", string, optional, None), ("cipher_suite", string, optional, None),
                          ("peer_certificates", string, repeated, None)])
    add("Assertions", [("fully_qualified_method", string, optional, None),
                       ("headers", message, repeated, "Header"), ("authority", string, optional, None),
                       ("context", message, optional, "Context"),
                       ("tls_assertions", message, optional, "TLSAssertions")])
    add("EchoRequest", [])
    add("EchoResponse", [("assertions", message, optional, "Assertions"),
                         ("request", message, optional, "EchoRequest")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)

    def cls(name):
        d = pool.FindMessageTypeByName(PACKAGE + "." + name)
        if hasattr(message_factory, "GetMessageClass"):
            return message_factory.GetMessageClass(d)
        return message_factory.MessageFactory(pool).GetPrototype(d)

    return cls("EchoRequest"), cls("EchoResponse")


EchoRequest, EchoResponse = _messages()


def serve(args):
    servers = []
    for arg in args:
        # PORT=NS/POD, or PORT=NS/POD,CERT,KEY to serve over TLS
        port, identity = arg.split("=", 1)
        identity, *tls = identity.split(",")
        namespace, pod = identity.split("/", 1)

        def handler(method, namespace=namespace, pod=pod):
            def answer(request, context):
                r = EchoResponse()
                a = r.assertions
                a.fully_qualified_method = "/" + SERVICE + "/" + method
                for key, value in context.invocation_metadata():
                    a.headers.add(key=key, value=value)
                a.context.namespace = namespace
                a.context.pod = pod
                r.request.CopyFrom(request)
                return r
            return grpc.unary_unary_rpc_method_handler(
                answer, request_deserializer=EchoRequest.FromString,
                response_serializer=EchoResponse.SerializeToString)

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler(SERVICE, {m: handler(m) for m in METHODS})])
        if tls:
            with open(tls[0], "rb") as crt, open(tls[1], "rb") as key:
                credentials = grpc.ssl_server_credentials([(key.read(), crt.read())])
            bound = server.add_secure_port("127.0.0.1:" + port, credentials)
        else:
            bound = server.add_insecure_port("127.0.0.1:" + port)
        if bound == 0:
            sys.exit("cannot listen on 127.0.0.1:" + port)
        server.start()
        servers.append(server)
    print("ready", flush=True)
    for server in servers:
        server.wait_for_termination()


def call(calls):
    channels = {}
    results = []
    for c in calls:
        key = (c["address"], c.get("authority") or "")
        if key not in channels:
            options = [("grpc.default_authority", key[1])] if key[1] else []
            channels[key] = grpc.insecure_channel(c["address"], options=options)
        rpc = channels[key].unary_unary("/" + SERVICE + "/" + c["method"],
                                        request_serializer=EchoRequest.SerializeToString,
                                        response_deserializer=EchoResponse.FromString)
        # gRPC metadata keys are lowercase, as Go's metadata.New makes them
        metadata = [(k.lower(), v) for k, v in sorted((c.get("metadata") or {}).items())]
        try:
            r = rpc(EchoRequest(), metadata=metadata, timeout=c.get("timeout", 10))
            a = r.assertions
            results.append({"code": "OK", "method": a.fully_qualified_method, "namespace": a.context.namespace,
                            "pod": a.context.pod, "headers": [[h.key, h.value] for h in a.headers]})
        except grpc.RpcError as e:
            results.append({"code": e.code().name, "details": e.details() or ""})
    for channel in channels.values():
        channel.close()
    json.dump(results, sys.stdout)


def hold(address, authority):
    channel = grpc.insecure_channel(address, options=[("grpc.default_authority", authority)])
    rpc = channel.unary_unary("/" + SERVICE + "/Echo", request_serializer=EchoRequest.SerializeToString,
                              response_deserializer=EchoResponse.FromString)
    for _ in sys.stdin:
        try:
            rpc(EchoRequest(), timeout=10)
            print("OK", flush=True)
        except grpc.RpcError as e:
            print(e.code().name, flush=True)
    channel.close()


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        serve(sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2 and sys.argv[1] == "call":
        call(json.load(sys.stdin))
    else:
        sys.exit(__doc__)
