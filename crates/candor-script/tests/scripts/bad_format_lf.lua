-- A bare LF in wrk.headers: the request built after init() would carry a second header.
wrk.headers["X-A"] = "a\nX-Injected: 1"
