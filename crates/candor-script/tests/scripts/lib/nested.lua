return { suffix = "?from=nested" }
