-- b3e1cf4a2d5e: add nodegroup.node_labels and nodegroup.node_taints (JSON text).
ALTER TABLE "nodegroup" ADD COLUMN "node_labels" TEXT;
ALTER TABLE "nodegroup" ADD COLUMN "node_taints" TEXT;
