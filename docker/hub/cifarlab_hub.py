"""The workshop's authenticator: NativeAuthenticator (each attendee signs up with a name and a
password of their own, so no one can log in as someone else) whose sign-up page also asks for a
code shared with the room (CIFARLAB_HUB_SIGNUP_CODE). docker/hub/jupyterhub_config.py uses it, and
so does z2jh/values.yaml (mounted into the hub with hub.extraFiles).
"""

import hmac

from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import LoginHandler, SignUpHandler
from traitlets import Unicode

CODE_FIELD = (
    '<label for="signup_code_input">Workshop code:</label>\n'
    '<input id="signup_code_input" type="password" name="signup_code" class="form-control" '
    'autocomplete="off" required />\n<p></p>\n'
)
_USERNAME_LABEL = '<label for="username_input">'


class WorkshopSignUpHandler(SignUpHandler):
    """NativeAuthenticator's sign-up page with a field for the workshop's code; a sign-up
    without the right code creates nobody."""

    def finish(self, chunk=None):
        # The sign-up page (GET, and POST when it shows a message) gets the code field.
        if isinstance(chunk, str) and _USERNAME_LABEL in chunk and "signup_code" not in chunk:
            chunk = chunk.replace(_USERNAME_LABEL, CODE_FIELD + _USERNAME_LABEL, 1)
        return super().finish(chunk)

    async def post(self):
        given = self.get_body_argument("signup_code", "")
        want = self.authenticator.signup_code
        if not want or not hmac.compare_digest(given.encode(), want.encode()):
            self.log.warning("sign-up refused for %r: wrong workshop code", self.get_body_argument("username", ""))
            html = await self.render_template(
                "signup.html",
                ask_email=self.authenticator.ask_email_on_signup,
                two_factor_auth=self.authenticator.allow_2fa,
                recaptcha_key=self.authenticator.recaptcha_key,
                tos=self.authenticator.tos,
                result_message="Wrong workshop code: ask the instructor for it.",
                alert="alert-danger",
            )
            self.set_status(403)
            self.finish(html)
            return
        await super().post()


class _NoStatsd:
    """What NativeAuthenticator 1.3.0's login handler needs of JupyterHub's statsd client, which
    JupyterHub 6 removed: a timer that measures nothing."""

    def timer(self, _name):
        return self

    def start(self):
        return self

    def stop(self, send=True):
        return self


class WorkshopLoginHandler(LoginHandler):
    """NativeAuthenticator's login page, made to run on JupyterHub 6: its post() times the login
    with self.statsd, an attribute JupyterHub 6 no longer has (every login failed with a 500)."""

    statsd = _NoStatsd()


class WorkshopAuthenticator(NativeAuthenticator):
    """NativeAuthenticator for a workshop: open sign-up for whoever has the room's code; each
    attendee then logs in with their own password, so no one can log in as someone else."""

    signup_code = Unicode("", config=True, help="The code attendees type to sign up (CIFARLAB_HUB_SIGNUP_CODE).")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.open_signup = True
        self.enable_signup = True

    def get_handlers(self, app):
        ours = {SignUpHandler: WorkshopSignUpHandler, LoginHandler: WorkshopLoginHandler}
        return [(p, ours.get(h, h)) for p, h in super().get_handlers(app)]
