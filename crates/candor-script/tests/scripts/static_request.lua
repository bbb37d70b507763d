-- No request(): the request built from the wrk.* fields after init() is sent every time.
wrk.method = "PUT"
wrk.path = "/static"
wrk.body = "payload"
wrk.headers["Content-Type"] = "text/plain"
