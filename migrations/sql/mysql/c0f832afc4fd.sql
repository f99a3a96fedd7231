-- c0f832afc4fd (Magnum 2026.1): add cluster_template.driver.
ALTER TABLE `cluster_template` ADD COLUMN `driver` VARCHAR(255) NULL;
