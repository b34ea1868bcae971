import { z } from "zod";

import { HttpClient, HttpError } from "./http";
import { logger } from "./logger";

export const UserSchema = z.object({
  id: z.string(),
  email: z.string().email(),
  name: z.string().min(1),
  createdAt: z.coerce.date(),
});

export type User = z.infer<typeof UserSchema>;

export interface ListOptions {
  page?: number;
  pageSize?: number;
  search?: string;
}

const DEFAULT_PAGE_SIZE = 50;

export class UserApi {
  constructor(
    private readonly http: HttpClient,
    private readonly baseUrl: string,
  ) {}

  async get(id: string): Promise<User> {
    const response = await this.http.get(`${this.baseUrl}/users/${id}`);
    return UserSchema.parse(response.body);
  }

  async list(options: ListOptions = {}): Promise<User[]> {
    const params = new URLSearchParams();
    params.set("page", String(options.page ?? 1));
    params.set("pageSize", String(options.pageSize ?? DEFAULT_PAGE_SIZE));
    if (options.search) {
      params.set("q", options.search);
    }
    const response = await this.http.get(
      `${this.baseUrl}/users?${params.toString()}`,
    );
    return z.array(UserSchema).parse(response.body);
  }

  async remove(id: string): Promise<void> {
    try {
      await this.http.delete(`${this.baseUrl}/users/${id}`);
    } catch (error) {
      if (error instanceof HttpError && error.status === 404) {
        logger.warn("user already removed", { id });
        return;
      }
      throw error;
    }
  }
}

export function displayName(user: User): string {
  if (user.name.trim().length > 0) {
    return user.name;
  }
  return user.email.split("@")[0];
}
