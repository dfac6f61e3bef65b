import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0001_initial'),
        ('providers', '0001_initial'),
    ]

    # The same table: only the model's app changed (jobs.Job).
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='providercall',
                    name='job',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='provider_calls', to='jobs.job'),
                ),
                migrations.AlterField(
                    model_name='spendentry',
                    name='job',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='spend_entries', to='jobs.job'),
                ),
            ],
            database_operations=[],
        ),
    ]
