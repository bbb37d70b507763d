-- A POST with a JSON body, set once at the top level (no request(): built once after init).
wrk.method = "POST"
wrk.body = '{"item": 42, "note": "posted by a script"}'
wrk.headers["Content-Type"] = "application/json"
