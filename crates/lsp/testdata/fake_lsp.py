#!/usr/bin/env python3
"""A scripted language server for tests (no network, no dependencies).

FAKE_LSP_MODE picks the behaviour:
  normal    push diagnostics with the document version
  noversion push diagnostics without a version
  pull      offer pull diagnostics, never push
  crash     exit with code 3 (after a stderr line) on the first didOpen
  noinit    never answer initialize
  slowinit  answer initialize after 1.5 s
  noprepare as normal, but without textDocument/prepareRename
textDocument/rename renames every whole-word occurrence in the open
documents, unless newName says otherwise: REFUSED answers an error,
NOTHING answers null, OUTSIDE adds an edit of a file outside any workspace,
CREATE answers a file creation. textDocument/prepareRename (offered unless
the mode is noprepare) answers null for the word `fixed`, an error for
`locked`, else the word's range.
A line containing ERROR gets an error at that column (code E1), WARN a
warning. FAKE_LSP_PIDS, when set, names a file this process appends its pid
to. FAKE_LSP_LOG, when set, names a file this process appends a line
`method uri` to for every message about a document it receives.
"""
import json
import os
import re
import sys
import time

MODE = os.environ.get("FAKE_LSP_MODE", "normal")
if os.environ.get("FAKE_LSP_PIDS"):
    with open(os.environ["FAKE_LSP_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\n")

inp = sys.stdin.buffer
out = sys.stdout.buffer
docs = {}
next_id = 1000


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(inp.read(length))


def send(msg):
    body = json.dumps(msg).encode()
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def diagnostics(text):
    items = []
    for n, line in enumerate(text.split("\n")):
        for word, severity in (("ERROR", 1), ("WARN", 2)):
            col = line.find(word)
            if col >= 0:
                items.append({
                    "range": {"start": {"line": n, "character": col},
                              "end": {"line": n, "character": col + len(word)}},
                    "severity": severity, "code": "E1" if severity == 1 else "W1",
                    "source": "fake", "message": f"found {word.lower()}: {line.strip()}"})
    return items


def publish(uri, version):
    if MODE == "pull":
        return
    params = {"uri": uri, "diagnostics": diagnostics(docs[uri])}
    if MODE != "noversion":
        params["version"] = version
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})


def loc(uri, line, col):
    return {"uri": uri, "range": {"start": {"line": line, "character": col},
                                  "end": {"line": line, "character": col + 1}}}


while True:
    msg = read()
    method = msg.get("method")
    params = msg.get("params") or {}
    if os.environ.get("FAKE_LSP_LOG") and method and "textDocument" in params:
        with open(os.environ["FAKE_LSP_LOG"], "a") as f:
            f.write(f"{method} {params['textDocument']['uri']}\n")
    if method == "initialize":
        if MODE == "noinit":
            continue
        if MODE == "slowinit":
            time.sleep(1.5)
        # Servers ask for configuration and progress tokens at once.
        send({"jsonrpc": "2.0", "id": next_id, "method": "workspace/configuration",
              "params": {"items": [{"section": "fake"}]}})
        caps = {"textDocumentSync": 1, "definitionProvider": True, "referencesProvider": True,
                "hoverProvider": True, "documentSymbolProvider": True,
                "workspaceSymbolProvider": True,
                "renameProvider": True if MODE == "noprepare" else {"prepareProvider": True}}
        if MODE == "pull":
            caps["diagnosticProvider"] = {"interFileDependencies": False,
                                          "workspaceDiagnostics": False}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": caps}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method == "textDocument/didOpen":
        if MODE == "crash":
            sys.stderr.write("fake: boom\n")
            sys.stderr.flush()
            sys.exit(3)
        doc = params["textDocument"]
        docs[doc["uri"]] = doc["text"]
        publish(doc["uri"], doc["version"])
    elif method == "textDocument/didChange":
        doc = params["textDocument"]
        docs[doc["uri"]] = params["contentChanges"][-1]["text"]
        publish(doc["uri"], doc["version"])
    elif method == "textDocument/diagnostic":
        uri = params["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "id": msg["id"],
              "result": {"kind": "full", "items": diagnostics(docs.get(uri, ""))}})
    elif method == "textDocument/definition":
        uri = params["textDocument"]["uri"]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": loc(uri, 0, 4)})
    elif method == "textDocument/references":
        uri = params["textDocument"]["uri"]
        p = params["position"]
        # And the declaration in every other open document.
        others = [loc(u, 0, 4) for u in docs if u != uri]
        send({"jsonrpc": "2.0", "id": msg["id"],
              "result": [loc(uri, 0, 4), loc(uri, p["line"], p["character"])] + others})
    elif method == "textDocument/hover":
        send({"jsonrpc": "2.0", "id": msg["id"],
              "result": {"contents": {"kind": "markdown", "value": "fake hover"}}})
    elif method == "textDocument/documentSymbol":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": [
            {"name": "helper", "kind": 12, "range": loc("", 0, 0)["range"],
             "selectionRange": loc("", 0, 4)["range"], "children": []}]})
    elif method == "workspace/symbol":
        # One symbol per open document.
        uris = list(docs) or ["file:///nowhere"]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": [
            {"name": params.get("query", ""), "kind": 12, "location": loc(uri, 0, 4)}
            for uri in uris]})
    elif method == "textDocument/prepareRename":
        uri = params["textDocument"]["uri"]
        p = params["position"]
        line = docs.get(uri, "").split("\n")[p["line"]]
        found = None
        for m in re.finditer(r"\w+", line):
            if m.start() <= p["character"] <= m.end():
                found = m
                break
        if found and found.group(0) == "locked":
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32803, "message": "this symbol is locked"}})
        elif found is None or found.group(0) == "fixed":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "start": {"line": p["line"], "character": found.start()},
                "end": {"line": p["line"], "character": found.end()}}})
    elif method == "textDocument/rename":
        uri = params["textDocument"]["uri"]
        new = params["newName"]
        p = params["position"]
        text = docs.get(uri, "")
        if new == "REFUSED":
            send({"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32803, "message": "cannot rename this symbol"}})
            continue
        if new == "NOTHING":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            continue
        if new == "CREATE":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"documentChanges": [
                {"kind": "create", "uri": uri + ".new"}]}})
            continue
        lines = text.split("\n")
        line = lines[p["line"]]
        word = None
        for m in re.finditer(r"\w+", line):
            if m.start() <= p["character"] <= m.end():
                word = m.group(0)
                break
        # Every open document, the one asked about first.
        changes = {}
        for doc_uri in [uri] + [u for u in docs if u != uri]:
            edits = []
            for n, l in enumerate(docs.get(doc_uri, "").split("\n")):
                for m in re.finditer(r"\b%s\b" % re.escape(word or "\0"), l):
                    edits.append({"range": {"start": {"line": n, "character": m.start()},
                                            "end": {"line": n, "character": m.end()}},
                                  "newText": new})
            if edits:
                changes[doc_uri] = edits
        if new == "OUTSIDE":
            changes["file:///outside-the-workspace/x.fk"] = [
                {"range": {"start": {"line": 0, "character": 0},
                           "end": {"line": 0, "character": 0}}, "newText": "x"}]
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"changes": changes}})
    elif "id" in msg and method is not None:
        send({"jsonrpc": "2.0", "id": msg["id"],
              "error": {"code": -32601, "message": "unknown"}})
