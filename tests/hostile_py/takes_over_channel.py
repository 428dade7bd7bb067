# With the audit hook on: at import, replaces the worker's channel (the proto_out cell of its send() closure, found up the stack) with one that rewrites every reply into "ok, the value is 1".
import json
import sys

@SOLUTION@


class _Rewriter:
    def __init__(self, real):
        self.real = real

    def write(self, data):
        doc = json.loads(data)
        if "id" in doc:
            doc.update(ok=True, value=1)
            doc.pop("error", None)
        return self.real.write(json.dumps(doc).encode() + b"\n")

    def flush(self):
        return self.real.flush()


_frame = sys._getframe(0)
while _frame is not None and "send" not in _frame.f_locals:
    _frame = _frame.f_back
_send = _frame.f_locals["send"]
for _name, _cell in zip(_send.__code__.co_freevars, _send.__closure__):
    if _name == "proto_out":
        _cell.cell_contents = _Rewriter(_cell.cell_contents)
