"""The ASGI app hypercorn serves over HTTP/3 in tests/e2e_h3.rs: 200 and a short body for any
request, after reading the request body."""


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello h3"})
