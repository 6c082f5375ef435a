/** The sign-in form: an API token (the one `windsock serve` prints on first start works) becomes a session. */
import { html } from '../html';
import { layout, notice, type PageContext } from '../ui';

export function signInPage(ctx: PageContext, next: string | null, error: string | undefined): string {
  return layout(
    ctx,
    'Sign in',
    html`<div class="signin">
      <h1>Sign in to Windsock</h1>
      ${notice(error, 'error')}
      <form method="post" action="/login">
        <input type="hidden" name="_csrf" value="${ctx.csrf}" />
        ${next ? html`<input type="hidden" name="next" value="${next}" />` : ''}
        <label for="token">API access token</label>
        <p class="hint" id="token-hint">
          A token from <code>windsock token create</code>, or the one printed when Windsock first started. It is kept on the server, never in your browser.
        </p>
        <input type="password" id="token" name="token" autocomplete="off" required aria-describedby="token-hint" />
        <p><button type="submit">Sign in</button></p>
      </form>
    </div>`,
  );
}
