/** An organization's emojis, the standard ones and its own: the list (not paginated, as the docs say). */
import { orgOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { serializeEmoji } from './serialize';
import type { EmojiService } from './service';

export function emojiRoutes(emojis: EmojiService) {
  const api = operationRouter();

  api.on('listEmojis', async (_req, res) => {
    res.json((await emojis.listed(orgOf(res).organization.id)).map(serializeEmoji));
  });

  return api.router;
}
