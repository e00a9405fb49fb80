import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { splitS3Url } from '../../../config/s3-url.js';
import type { StoredDocuments } from '../object-store.js';
import { s3StatusOf } from './s3-errors.js';

/**
 * Documents as objects below an s3:// prefix: each one PutObject (an object appears whole or not
 * at all), listed with a delimiter so a folder's listing is its own.
 */
export function s3Documents(client: S3Client, root: string): StoredDocuments {
  const { bucket, rest } = splitS3Url(root)!;
  const prefix = rest === '' || rest.endsWith('/') ? rest : `${rest}/`;
  return {
    async put(name, text) {
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}${name}`, Body: text, ContentType: 'application/json' }));
    },
    async list(folder) {
      const below = `${prefix}${folder}/`;
      const names: string[] = [];
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: below, Delimiter: '/', ...(ContinuationToken ? { ContinuationToken } : {}) }),
        );
        for (const object of page.Contents ?? []) if (object.Key !== undefined && object.Key !== below) names.push(object.Key.slice(below.length));
        ContinuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
      } while (ContinuationToken !== undefined);
      return names;
    },
    async get(name) {
      try {
        const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}${name}` }));
        return (await answer.Body?.transformToString('utf8')) ?? '';
      } catch (error) {
        if (s3StatusOf(error) === 404) return undefined;
        throw error;
      }
    },
    async remove(name) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: `${prefix}${name}` }));
    },
  };
}
