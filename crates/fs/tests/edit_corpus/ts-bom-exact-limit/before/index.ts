import express from "express";
import helmet from "helmet";

import { config } from "./config";
import { router as usersRouter } from "./routes/users";
import { router as ordersRouter } from "./routes/orders";

const app = express();

app.use(helmet());
app.use(express.json({ limit: "1mb" }));

app.get("/healthz", (_req, res) => {
  res.status(200).send("ok");
});

app.use("/users", usersRouter);
app.use("/orders", ordersRouter);

app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
  console.error(err);
  res.status(500).json({ error: "internal error" });
});

app.listen(config.port, () => {
  console.log(`listening on port ${config.port}`);
});
