"""`taas dashboard` and `taas run --dashboard`: the server's guard and access rules, attacks
on it, streams, sessions, shares, the Submit form, and the page in a headless Chromium, on
the session's control plane with the operator running."""
