"""TensorBoard as `tensorboard ARGS` runs it, minus `Content-Encoding: identity` on answers.

The operator runs this file's text (`python -c`) in a job's TensorBoard pod: it needs only
TensorBoard, so any image with TensorBoard serves. Why: TensorBoard labels its page
`Content-Encoding: identity`, and the apiserver's service proxy (the one `taas tensorboard`
goes through) closes the body of a text/html answer in an encoding it does not rewrite, so the
page never arrived (kubectl saw INTERNAL_ERROR). `identity` means "no encoding": dropping the
header changes nothing else.
"""

from collections.abc import Callable, Iterable
from typing import Any

from absl import app
from tensorboard import default, main_lib, program

Headers = list[tuple[str, str]]


def without_identity(wsgi: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """`wsgi` with `Content-Encoding: identity` left off its answers' headers."""

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def start(status: str, headers: Headers, exc_info: Any = None) -> Any:
            kept = [
                (key, value)
                for key, value in headers
                if (key.lower(), value.strip().lower()) != ("content-encoding", "identity")
            ]
            return start_response(status, kept, exc_info)

        return wsgi(environ, start)

    return serve


def main() -> None:
    main_lib.global_init()
    board = program.TensorBoard(
        plugins=default.get_plugins(),
        server_class=lambda wsgi, flags: program.create_port_scanning_werkzeug_server(
            without_identity(wsgi), flags
        ),
    )
    app.run(board.main, flags_parser=board.configure)  # exits with TensorBoard's status


if __name__ == "__main__":
    main()
