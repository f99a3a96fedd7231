-- d7e6a4d39fe4: drop the per-cluster trust columns.
ALTER TABLE "cluster" DROP COLUMN "trust_id";
ALTER TABLE "cluster" DROP COLUMN "trustee_username";
ALTER TABLE "cluster" DROP COLUMN "trustee_user_id";
ALTER TABLE "cluster" DROP COLUMN "trustee_password";
