"""`moonshot web`: the tournament on web pages, a client of the referee's public gRPC API.

`clients.web.command` adds the command (and imports nothing heavy); `clients.web.app`
is the application (why Starlette, and the routes, are in its docstring);
`clients.web.live` shares one upstream stream per followed tournament or match among
every page; `clients.web.views` turns protobuf messages into what the pages show.
"""
