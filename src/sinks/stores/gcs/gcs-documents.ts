import type { Storage } from '@google-cloud/storage';
import { splitGcsUrl } from '../../../config/gcs-url.js';
import type { StoredDocuments } from '../object-store.js';

const isNotFound = (error: unknown) => (error as { code?: unknown }).code === 404;

/**
 * Documents as objects below a gs:// prefix: each one upload of one request (an object appears
 * whole or not at all), listed with a delimiter so a folder's listing is its own.
 */
export function gcsDocuments(storage: Storage, root: string): StoredDocuments {
  const { bucket: bucketName, rest } = splitGcsUrl(root)!;
  const prefix = rest === '' || rest.endsWith('/') ? rest : `${rest}/`;
  const bucket = storage.bucket(bucketName);
  return {
    async put(name, text) {
      await bucket.file(`${prefix}${name}`).save(text, { resumable: false, contentType: 'application/json' });
    },
    async list(folder) {
      const below = `${prefix}${folder}/`;
      const [files] = await bucket.getFiles({ prefix: below, delimiter: '/', autoPaginate: true });
      return files.map((file) => file.name.slice(below.length)).filter((name) => name !== '');
    },
    async get(name) {
      try {
        const [bytes] = await bucket.file(`${prefix}${name}`).download();
        return bytes.toString('utf8');
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    async remove(name) {
      await bucket.file(`${prefix}${name}`).delete({ ignoreNotFound: true });
    },
  };
}
