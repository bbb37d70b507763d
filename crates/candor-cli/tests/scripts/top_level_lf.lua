-- A bare LF in wrk.headers set at the top level: the request built after init() carries it.
wrk.headers["X-A"] = "a\nX-Injected: 1"
